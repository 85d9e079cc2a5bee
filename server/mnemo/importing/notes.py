"""The files people already keep, read into entries (``mnemo import --from claude-md|agents-md|
claude-auto-memory|codex-memories [PATH]``).

- **CLAUDE.md / AGENTS.md** (a person's): each list item (its wrapped lines and nested items with
  it) and each paragraph is an entry, prefixed by the heading it is under; a code block goes with
  the entry before it. Front matter, HTML comments, tables' rules and ``@path`` imports are left
  out. A file in a repository is that workspace's; ``~/.claude/CLAUDE.md`` and
  ``~/.codex/AGENTS.md`` are the person's.
- **Claude Code's auto-memory** (``~/.claude/projects/<project>/memory/``, Claude's): each topic
  file (front matter ``name``, ``description``, ``type``; "Why:" and "How to apply:" lines become
  the memory's why and how) is an entry, and each line of ``MEMORY.md`` that is not a link to a
  topic file. ``type: user`` is about the person (their namespace); the others are the project's,
  whose directory is read from the project's own transcripts (their ``cwd``).
- **Codex's memories** (``~/.codex/memories``, Codex's): the bullets of ``MEMORY.md`` — each block's
  workspace from the ``cwd=`` its header names — and those of ``memory_summary.md``'s "General
  Tips" (the person's). Raw memories and rollout summaries are Codex's working files, not read.

Private spans (``<private>…</private>``, :mod:`mnemo.private`) are removed from a file before it
is split. A type is guessed from the words (a rule per type, English and Spanish; fact otherwise); a person
edits it on review.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from mnemo.api.notes import NoteSource
from mnemo.errors import InputError
from mnemo.memories import MAX_MEMORY_CHARS, MAX_W_CHARS
from mnemo.private import PLACEHOLDER, remove_private
from mnemo.vocabulary import MemoryType
from mnemo.workspace import workspace_namespace

_NOT_SEARCHED = frozenset({"node_modules", "venv", "__pycache__", "dist", "build", "target", "vendor"})
MIN_CHARS = 12  # shorter entries ("TODO", "Notes") say nothing on their own
# What the hosts write at the top of a generated file: about the file, not the project.
_BOILERPLATE = re.compile(r"^This file provides guidance to ", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$|^\s*\|?[\s:|-]+\|[\s:|-]*$")
_LINK_ONLY = re.compile(r"^\[[^\]]+\]\(([^)]+\.md)\)")
_RULES: tuple[tuple[MemoryType, re.Pattern[str]], ...] = tuple(
    (t, re.compile(p, re.IGNORECASE))
    for t, p in (
        (
            MemoryType.POSTMORTEM,
            r"\b(post-?mortem|root cause|incident|outage|lessons? learned|causa ra[ií]z)\b",
        ),
        (
            MemoryType.DECISION,
            r"\b(we (decided|chose|agreed)|decided to|decision|decidimos|acordamos|decisi[oó]n)\b",
        ),
        (
            MemoryType.PREFERENCE,
            r"^(always|never|prefer|don'?t|do not|avoid|keep|siempre|nunca|no uses?)\b"
            r"|\b(i prefer|prefers?|i like|i don'?t like|prefiero|me gusta)\b",
        ),
        (
            MemoryType.PROCEDURE,
            r"^(run|build|test|deploy|install|start|stop|create|use|call|make|execute|to [a-z]+,|"
            r"ejecuta|usa|instala)\b",
        ),
    )
)


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    line: int
    text: str
    namespace: str
    type: MemoryType = MemoryType.FACT
    why: str = ""
    how: str = ""


def guess_type(text: str, default: MemoryType = MemoryType.FACT) -> MemoryType:
    """The type an entry's words suggest; ``default`` when none does."""
    plain = text.lstrip("*_`> ").strip()
    for memory_type, rule in _RULES:
        if rule.search(plain):
            return memory_type
    return default


def default_paths(source: NoteSource, home: Path, cwd: Path) -> list[Path]:
    """Where ``source`` lives when no PATH is given."""
    if source == "claude-md":
        return [cwd / "CLAUDE.md", cwd / ".claude" / "CLAUDE.md", home / ".claude" / "CLAUDE.md"]
    if source == "agents-md":
        return [cwd / "AGENTS.md", home / ".codex" / "AGENTS.md"]
    if source == "claude-auto-memory":
        return [home / ".claude" / "projects"]
    return [home / ".codex" / "memories"]


def read_notes(source: NoteSource, paths: list[Path], person: str, home: Path) -> list[Entry]:
    """Every entry of ``source`` under ``paths`` (files, or directories searched as the source
    lays them out). Paths that do not exist are skipped; none at all is an InputError."""
    found = [p for p in paths if p.exists()]
    if not found:
        raise InputError(f"nothing to import from {source}: {', '.join(str(p) for p in paths)} not found")
    entries: list[Entry] = []
    for path in found:
        if source in ("claude-md", "agents-md"):
            name = "CLAUDE.md" if source == "claude-md" else "AGENTS.md"
            files = sorted(_found_in(path, name)) if path.is_dir() else [path]
            for file in files:
                entries += markdown_entries(file, _namespace_of_file(file, person, home))
        elif source == "claude-auto-memory":
            entries += _auto_memory(path, person)
        else:
            entries += _codex_memories(path, person)
    return [_fitted(e) for e in entries if len(e.text) >= MIN_CHARS and not _BOILERPLATE.match(e.text)]


def _found_in(directory: Path, name: str) -> Iterator[Path]:
    """The files called ``name`` in ``directory`` and below, but for dependencies, build output and
    hidden directories (``.claude`` excepted: a project's CLAUDE.md may live there)."""
    for root, directories, files in os.walk(directory):
        directories[:] = [
            d for d in directories if d not in _NOT_SEARCHED and (d == ".claude" or not d.startswith("."))
        ]
        if name in files:
            yield Path(root) / name


def _namespace_of_file(file: Path, person: str, home: Path) -> str:
    """The person's for their own config files (~/.claude, ~/.codex), else the file's workspace."""
    resolved = file.resolve()
    for own in (home / ".claude", home / ".codex"):
        if resolved.parent == own.resolve():
            return person
    directory = resolved.parent.parent if resolved.parent.name == ".claude" else resolved.parent
    return workspace_namespace(str(directory))


def markdown_entries(
    file: Path,
    namespace: str,
    *,
    text: str | None = None,
    first_line: int = 1,
    default: MemoryType = MemoryType.FACT,
) -> list[Entry]:
    """A Markdown file's list items and paragraphs, each under its nearest heading; ``text``: a
    part of the file, starting at line ``first_line`` (else the whole file is read)."""
    lines = (_read(file) if text is None else text).split("\n")
    entries: list[Entry] = []
    heading = ""
    current: list[str] = []  # the entry being gathered
    start = 0
    in_code = False
    code: list[str] = []

    def flush() -> None:
        nonlocal current
        if current:
            text = " ".join(" ".join(current).split())
            prefixed = (
                f"{heading}: {text}" if heading and not text.lower().startswith(heading.lower()) else text
            )
            entries.append(Entry(file, start, prefixed, namespace, guess_type(text, default)))
        current = []

    for number, line in _content_lines(lines, first_line):
        if _FENCE.match(line):
            if in_code:
                in_code = False
                if entries and code:  # a command goes with the entry it illustrates
                    last = entries[-1]
                    entries[-1] = replace(last, text=f"{last.text}\n```\n" + "\n".join(code) + "\n```")
                code = []
            else:
                flush()
                in_code = True
            continue
        if in_code:
            code.append(line)
            continue
        if (match := _HEADING.match(line)) is not None:
            flush()
            heading = match.group(2).strip() if len(match.group(1)) > 1 else ""
            continue
        if (
            not line.strip()
            or _RULE.match(line)
            or line.lstrip().startswith("@")
            or line.strip() == PLACEHOLDER
        ):
            flush()
            continue
        item = _ITEM.match(line)
        if item is not None and not item.group(1):  # a top-level item starts an entry
            flush()
            start = number
            current = [item.group(2)]
        elif item is not None or (current and line.startswith((" ", "\t"))):
            current.append(item.group(2) if item else line.strip())  # nested, or wrapped
        else:
            if not current:
                start = number
            current.append(line.strip().strip("|").replace("|", " · "))
    flush()
    return entries


def _content_lines(lines: list[str], first_line: int) -> Iterator[tuple[int, str]]:
    """Lines with their numbers (the first is ``first_line``), front matter and HTML comments left out."""
    skip_to = 0
    if lines and lines[0].strip() == "---":
        skip_to = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
    in_comment = False
    for index, line in enumerate(lines[skip_to:], start=skip_to + first_line):
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        yield index, line


def _auto_memory(root: Path, person: str) -> list[Entry]:
    """Claude Code's auto-memory: a memory directory, a project's directory, or the projects root."""
    if (root / "MEMORY.md").is_file() or root.name == "memory":
        directories = [root]
    elif (root / "memory").is_dir():
        directories = [root / "memory"]
    else:
        directories = sorted(d for d in root.glob("*/memory") if d.is_dir())
    entries: list[Entry] = []
    for directory in directories:
        workspace = _project_namespace(directory.parent)
        topics = sorted(p for p in directory.glob("*.md") if p.name != "MEMORY.md")
        for topic in topics:
            entries += _topic(topic, workspace, person)
        index = directory / "MEMORY.md"
        if index.is_file():
            linked = {t.name for t in topics}
            entries += [
                e
                for e in markdown_entries(index, workspace)
                if not (
                    (m := _LINK_ONLY.match(e.text.split(": ", 1)[-1])) and Path(m.group(1)).name in linked
                )
            ]
    return entries


def _project_namespace(project: Path) -> str:
    """The workspace of a Claude Code project directory (``~/.claude/projects/-home-ana-shop``):
    the cwd its transcripts name, else the directory its name spells."""
    for transcript in sorted(project.glob("*.jsonl"))[:20]:
        try:
            with transcript.open(encoding="utf-8", errors="replace") as handle:
                for _, line in zip(range(50), handle, strict=False):
                    cwd = json.loads(line).get("cwd") if line.startswith("{") else None
                    if isinstance(cwd, str) and cwd:
                        return workspace_namespace(cwd)
        except (OSError, ValueError):
            continue
    # Dashes stand for slashes and for themselves alike: the directory spelled may not be it.
    return workspace_namespace("/" + project.name.lstrip("-").replace("-", "/"))


def _topic(file: Path, workspace: str, person: str) -> list[Entry]:
    """An auto-memory topic file: front matter (name, description, type), then the memory."""
    text = _read(file)
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---\n") and (end := text.find("\n---", 4)) > 0:
        for line in text[4:end].splitlines():
            key, _, value = line.partition(":")
            meta[key.strip().lower()] = value.strip().strip("'\"")
        body = text[end + 4 :]
    what, why, how = [], "", ""
    for line in body.splitlines():
        plain = line.strip().strip("*_").strip()
        lowered = plain.lower()
        if lowered.startswith(("why:", "**why:**")):
            why = plain.split(":", 1)[1].strip(" *")
        elif lowered.startswith(("how to apply:", "how:")):
            how = plain.split(":", 1)[1].strip(" *")
        elif plain and not plain.startswith("#"):
            what.append(plain.lstrip("-* ").strip())
    kind = meta.get("type", "").lower()
    default = {"user": MemoryType.PREFERENCE, "feedback": MemoryType.PREFERENCE}.get(kind, MemoryType.FACT)
    statement = " ".join(what) or meta.get("description", "")
    return [
        Entry(
            file,
            1,
            statement,
            person if kind == "user" else workspace,
            guess_type(statement, default),
            why,
            how,
        )
    ]


def _codex_memories(root: Path, person: str) -> list[Entry]:
    """Codex's memory folder: MEMORY.md's blocks, memory_summary.md's General Tips."""
    entries: list[Entry] = []
    registry = root / "MEMORY.md" if root.is_dir() else root
    if registry.is_file() and registry.name == "MEMORY.md":
        for block_start, header, block in _codex_blocks(_read(registry)):
            cwd = re.search(r"cwd=([^,)\s]+)", header)
            namespace = workspace_namespace(cwd.group(1)) if cwd else person
            entries += markdown_entries(registry, namespace, text=block, first_line=block_start)
    summary = root / "memory_summary.md" if root.is_dir() else None
    if summary is not None and summary.is_file():
        tips = [e for e in markdown_entries(summary, person) if e.text.startswith("General Tips: ")]
        entries += [replace(e, text=e.text.removeprefix("General Tips: ")) for e in tips]
    return entries


def _codex_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """MEMORY.md's blocks: (first body line's number, the YAML header, the body)."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() == "---":
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "---"), len(lines))
            body_end = next((j for j in range(end + 1, len(lines)) if lines[j].strip() == "---"), len(lines))
            yield end + 2, "\n".join(lines[index + 1 : end]), "\n".join(lines[end + 1 : body_end])
            index = body_end
        else:
            index += 1


def _read(file: Path) -> str:
    try:
        # Private spans go before the file is split: a span over several entries hides them all.
        return remove_private(file.read_text(encoding="utf-8-sig", errors="replace").replace("\r\n", "\n"))
    except OSError as exc:
        raise InputError(f"{file}: cannot be read ({exc.strerror})") from None


def _fitted(entry: Entry) -> Entry:
    """Within a memory's bounds (a long entry is cut, saying so)."""

    def cut(text: str, limit: int) -> str:
        return text if len(text) <= limit else text[: limit - 12].rstrip() + " …[cut]"

    return replace(
        entry,
        text=cut(entry.text, MAX_MEMORY_CHARS),
        why=cut(entry.why, MAX_W_CHARS),
        how=cut(entry.how, MAX_W_CHARS),
    )
