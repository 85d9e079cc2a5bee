"""The ``mnemo`` command line: every command, its arguments and their help."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo.vocabulary import KEEP_FILE_PATH, NOTE_SOURCES, TRANSCRIPT_HOSTS, KeepScope, MemoryType

MEMORY_TYPES = [t.value for t in MemoryType]
AUDIT_KINDS = ("junk", "duplicate", "superseded", "code", "unused", "credential")


class _Version(argparse.Action):
    """``--version``: the package's version is read only when asked (importlib.metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from mnemo import __version__  # noqa: PLC0415

        sys.stdout.write(f"mnemo {__version__}\n")
        parser.exit()


def build_parser(commands_in_order: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line; ``commands_in_order`` only checks that every command is parsed."""
    parser = argparse.ArgumentParser(prog="mnemo", description="Long-term memory for coding agents.")
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("remember", help="store an explicit memory")
    p.add_argument("content", help="the memory, one self-contained statement")
    p.add_argument("--type", required=True, choices=MEMORY_TYPES)
    p.add_argument("--namespace", help="person:<name> or workspace:<id> (default: the active person)")
    for w in ("what", "who", "when", "where", "why", "how"):
        p.add_argument(f"--{w}", default="", help=f"the memory's {w}")
    p.add_argument(
        "--entity",
        action="append",
        default=[],
        metavar="NAME[:ROLE][=ALIAS,...]",
        help="an entity it involves, optionally with its role and aliases (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")

    p = commands.add_parser("recall", help="search memories (and episodes when no memory answers)")
    p.add_argument("query")
    p.add_argument("--namespace")
    p.add_argument("--type", action="append", dest="types", choices=MEMORY_TYPES)
    p.add_argument(
        "--history",
        action="store_true",
        dest="include_history",
        help="rank closed (no longer true) memories as if the question asked about history",
    )
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--explain", action="store_true", help="show each component of each score")
    p.add_argument("--json", action="store_true", help="print the MCP tool's structured output")

    p = commands.add_parser("recall-episode", help="read raw episodes by id, memory, session or query")
    p.add_argument("id", nargs="?", help="an episode id")
    p.add_argument("--memory", help="a memory id: the episodes it comes from")
    p.add_argument("--session")
    p.add_argument("--from-turn", type=int)
    p.add_argument("--to-turn", type=int)
    p.add_argument("--query")
    p.add_argument("--namespace")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print the MCP tool's structured output")

    p = commands.add_parser("check-code", help="which memories' files changed since they were written")
    p.add_argument(
        "directory", nargs="?", default=".", help="a directory in the git checkout (default: here)"
    )
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("forget", help="mark a memory forgotten (kept, no longer recalled)")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser(
        "export", help="write every memory (and optionally its history and episodes) to a file"
    )
    p.add_argument("file", help="the file to write (- for standard output)")
    p.add_argument(
        "--format",
        choices=["jsonl", "markdown"],
        help="jsonl (the default) or markdown (the default for a FILE ending in .md)",
    )
    p.add_argument(
        "--namespace", action="append", default=[], help="only this namespace (repeatable; default: all)"
    )
    p.add_argument(
        "--with-history", action="store_true", help="every version of each memory, not only the current one"
    )
    p.add_argument("--with-episodes", action="store_true", help="the namespaces' episodes too")
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = commands.add_parser(
        "import",
        help="import memories from an export, or episodes from a JSONL file or Claude Code / Codex "
        "transcripts (idempotent)",
    )
    p.add_argument(
        "file",
        type=Path,
        nargs="?",
        help="the JSONL file; with --from, a transcript file or directory (default: the host's own)",
    )
    p.add_argument(
        "--from",
        dest="source",
        choices=["jsonl", *TRANSCRIPT_HOSTS, *NOTE_SOURCES],
        default="jsonl",
        help="transcripts (claude-code: ~/.claude/projects; codex: ~/.codex/sessions), or the files "
        "people keep, as candidates for review (claude-md, agents-md: ./ and ~/.claude or ~/.codex; "
        "claude-auto-memory: ~/.claude/projects/*/memory; codex-memories: ~/.codex/memories)",
    )
    p.add_argument(
        "--memories",
        action="store_true",
        help="FILE is a `mnemo export` (JSONL or Markdown): restore its memories, ids kept",
    )
    p.add_argument("--batch-lines", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = commands.add_parser(
        "keep", help="the curated sets injected at every session start: list, edit, export, import"
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    keep_actions = {
        "list": ("show both sets (the default)", []),
        "add": ("add an entry", ["entry"]),
        "replace": ("replace the entry holding OLD_TEXT", ["old_text", "entry"]),
        "remove": ("remove the entry holding OLD_TEXT", ["old_text"]),
        "export": (f"write the project set to {KEEP_FILE_PATH} in the repository", []),
        "import": (f"make {KEEP_FILE_PATH} in the repository the project set", []),
    }
    for name, (help_text, positionals) in keep_actions.items():
        a = actions.add_parser(name, help=help_text)
        for positional in positionals:
            a.add_argument(positional)
        if name in ("add", "replace", "remove"):
            a.add_argument("--scope", choices=[s.value for s in KeepScope], default=KeepScope.PROJECT.value)
        a.add_argument("--dir", type=Path, default=None, help="the project directory (default: here)")
        if name == "list":
            a.add_argument("--json", action="store_true", help="print the sets as JSON")
    p.set_defaults(action="list", dir=None, json=False)

    p = commands.add_parser("review", help="the review queue: list, approve, reject or edit candidates")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    a = actions.add_parser("url", help="the review page's address, with your secret (--open: in a browser)")
    a.add_argument("--open", action="store_true", help="open it in the default browser")
    a = actions.add_parser("list", help="the pending candidates (the default), or --approved memories")
    a.add_argument("--approved", action="store_true", help="list approved (active) memories instead")
    a.add_argument("--namespace", help="only this namespace")
    a.add_argument("--json", action="store_true")
    for name, help_text in (
        ("approve", "approve a candidate (with edits, if given): it becomes searchable at once"),
        ("reject", "reject a candidate"),
        ("edit", "change a candidate's or an approved memory's text, type or namespace"),
    ):
        a = actions.add_parser(name, help=help_text)
        a.add_argument("id")
        if name == "reject":
            a.add_argument("--reason", default="", help="why (kept with the memory)")
        else:
            a.add_argument("--content", help="the new text")
            a.add_argument("--type", choices=MEMORY_TYPES)
            a.add_argument("--namespace", help="person:<name> or workspace:<id>")
            a.add_argument("--why")
            a.add_argument("--how")
    p.set_defaults(action="list", approved=False, namespace=None, json=False)

    p = commands.add_parser(
        "audit",
        help="the store's health: likely junk, duplicates, superseded, unused memories, and what to do",
    )
    p.add_argument("--kind", action="append", choices=AUDIT_KINDS, help="only these findings (repeatable)")
    p.add_argument("--namespace", help="only this namespace")
    p.add_argument("--days", type=int, default=30, help="the window unused memories are counted over")
    p.add_argument(
        "--apply", choices=AUDIT_KINDS, metavar="KIND", help="apply this kind's action to its findings"
    )
    p.add_argument(
        "--id", action="append", help="with --apply: only the finding about this memory (repeatable)"
    )
    p.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("status", help="version, store, daemon and counts")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser(
        "distill", help="distil a session now (needs a writer: llm_url, or a host's CLI: mnemo writer use)"
    )
    p.add_argument("session")
    p.add_argument(
        "--again",
        action="store_true",
        help="read it anew from its first episode (after a change of model): what it says again merges",
    )
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("judge-log", help="the judge's decisions, newest first")
    p.add_argument("--session", default=None, help="only this session's")
    p.add_argument("--memory", default=None, help="only those that judged, merged into or closed this memory")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("writer", help="the writer's language model")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = actions.add_parser(
        "calibrate", help="fit how the judge reads the configured model (log-probabilities needed)"
    )
    a.add_argument(
        "--limit", type=int, metavar="N", help="only N of the shipped pairs, taken evenly: a rough, quick fit"
    )
    a.add_argument("--yes", action="store_true", help="go on without asking once the time is estimated")
    a = actions.add_parser(
        "use", help="the writer's model: a host's CLI with its own login (claude-code, codex), or llm_url"
    )
    a.add_argument("backend", choices=("claude-code", "codex", "openai", "off"), help="off: same as openai")
    a.add_argument("--model", help="the CLI's --model (default: haiku for claude-code, codex's own)")
    a.add_argument("--command", dest="cli", help="the CLI's path (default: claude or codex on PATH)")
    a.add_argument("--url", help="a base URL the CLI talks to instead of its login (with llm_api_key)")

    p = commands.add_parser("stats", help="memory injected into sessions and whether it was used")
    p.add_argument("--days", type=int, default=30, help="the last DAYS UTC days, today included (default 30)")
    p.add_argument(
        "--chart", type=Path, metavar="FILE.html", help="also write a chart of injected vs used per day"
    )
    p.add_argument("--json", action="store_true")

    p = commands.add_parser(
        "unsuppress", help="inject a memory again where it was suppressed for never being used"
    )
    p.add_argument("id", help="the memory's id (mnemo stats lists what is suppressed)")

    p = commands.add_parser("models", help="list, verify, install or fetch embedding models")
    p.add_argument("action", nargs="?", choices=["list", "verify", "install", "fetch"], default="list")
    p.add_argument(
        "target", nargs="?", help="install: a model directory with mnemo-model.json; fetch: embeddinggemma"
    )
    p.add_argument("--hub-url", default=None, help="fetch: the hub's base URL (a mirror)")
    p.add_argument("--quiet", action="store_true", help="fetch: no progress bar")
    p.add_argument(
        "--allow-degraded",
        action="store_true",
        help="install, fetch: install a model that is not faithful to its float model on this CPU",
    )
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("daemon", help="start, stop or inspect the background daemon")
    p.add_argument("action", choices=["start", "stop", "status", "run"])
    p = commands.add_parser("server", help="make a ClickHouse server ready: database, tables, access")
    p.add_argument("action", choices=["init", "setup"])
    p.add_argument("--member", action="append", default=[], help="setup: a server user given mnemo's role")
    p.add_argument(
        "--writer",
        action="append",
        default=[],
        help="setup: the sidecar writer's server user (a member who reads and writes every workspace)",
    )
    p.add_argument(
        "--workspace",
        action="append",
        default=[],
        metavar="ID=USER[,USER…]",
        help="setup: a workspace only these members may read (others: every member)",
    )
    p.add_argument(
        "--apply", action="store_true", help="setup: run the SQL (as an admin) instead of printing it"
    )

    p = commands.add_parser(
        "setup", help="register mnemo's MCP server and hooks in a host's own settings (--undo: take them out)"
    )
    p.add_argument("host", nargs="+", choices=("claude-code", "codex"))
    p.add_argument("--undo", action="store_true", help="take mnemo's entries out, every other setting kept")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument(
        "--command",
        dest="mcp_command",
        metavar="COMMAND",
        help="what the host runs (default: the mnemo-mcp installed beside this mnemo, by its full path)",
    )
    p.add_argument("--force", action="store_true", help="register even where the mnemo plugin is enabled")

    p = commands.add_parser("doctor", help="what each host needs to run mnemo, and what it lacks")
    p.add_argument("--json", action="store_true")

    if commands_in_order is not None:  # an action with a handler of its own is "command action"
        named = {c.split()[0] for c in commands_in_order}
        assert sorted(commands.choices) == sorted(named), "a command without a handler"
    return parser
